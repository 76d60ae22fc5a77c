"""The device URL schemes ``open_device`` knows (registered in ``devices/url.py``): each class
parses its own URLs (allowed keys, sizes, flags) and opens the device."""
