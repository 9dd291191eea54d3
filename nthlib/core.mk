# Build fragment for nthlib/core: add sources, programs and tests with +=.
