"""Mixed groups: classic and KIP-848 members in one consumer group (KIP-848 upgrade path)."""
