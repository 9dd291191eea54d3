# Build fragment for tests/shim: add sources, programs and tests with +=.
