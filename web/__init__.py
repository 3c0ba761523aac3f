"""Site-wide web infrastructure: middleware and request plumbing shared by the apps."""
