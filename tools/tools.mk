# Build fragment for tools/tools: add sources, programs and tests with +=.
