import os
import sys

# The corpus helper module sits next to the tests.
sys.path.insert(0, os.path.dirname(__file__))
