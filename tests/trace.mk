# Build fragment for tests/trace: add sources, programs and tests with +=.
