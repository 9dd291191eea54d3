# Build fragment for cpumgr/cpumgr: add sources, programs and tests with +=.
