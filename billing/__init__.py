"""The composition: the `billing` command, all-in-one, the demo, sample data and dev tools.

It stands above the three roles and may import them all; nothing below imports it.
"""
