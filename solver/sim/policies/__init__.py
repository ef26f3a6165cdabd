"""Online policies, one module per family of schedulers."""
