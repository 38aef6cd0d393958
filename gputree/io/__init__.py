"""Model file formats; each module reads and writes one format from a
:class:`gputree.model.FittedModel`."""
