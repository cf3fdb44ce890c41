"""Drivers for the papers' figure experiments that are not a datasets x methods table."""
