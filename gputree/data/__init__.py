"""Data in: a user's X, y and weights checked (:mod:`.validation`), read
column by column whatever their kind (:mod:`.adapters`), encoded
(:mod:`.encoder`), binned (:mod:`.binning`) into :class:`.binned.BinnedData`
on a backend (:mod:`.training`: the one way in for a fit)."""
