"""Reading fitted models: each module reads (and, for files, writes) one
format from a :class:`gputree.model.FittedModel` or a fitted tree: the JSON
model file (:mod:`.json`), Treelite (:mod:`.treelite`), text
(:mod:`.text`), matplotlib and Graphviz drawings (:mod:`.plotting`) and
scikit-learn's ``Tree`` view (:mod:`.sklearn_tree`)."""
