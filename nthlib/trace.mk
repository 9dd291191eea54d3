# Build fragment for nthlib/trace: add sources, programs and tests with +=.
