import sys

from leaktrace.cli import main

sys.exit(main())
