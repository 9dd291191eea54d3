# Build fragment for tests/core: unit tests of the runtime core.
