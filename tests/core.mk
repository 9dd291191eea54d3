# Build fragment for tests/core: add sources, programs and tests with +=.
