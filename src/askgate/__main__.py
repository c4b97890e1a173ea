"""`python -m askgate …` is the `askgate` command."""

import sys

from askgate.entry import main

sys.exit(main())
