"""Embedded reference tables and their lookups: accelerators, instance families, prices."""
