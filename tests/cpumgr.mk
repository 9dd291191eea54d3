# Build fragment for tests/cpumgr: add sources, programs and tests with +=.
