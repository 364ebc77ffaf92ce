"""Storage: the one git gateway, the store (objects, CAS on refs), packs, commit walks."""
