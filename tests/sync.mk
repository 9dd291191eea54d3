# Build fragment for tests/sync: add sources, programs and tests with +=.
