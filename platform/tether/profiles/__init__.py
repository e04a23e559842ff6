"""The GlobalUserProfile: the cross-relationship layer, gated by policy AND consent."""
