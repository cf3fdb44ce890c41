"""Shared building blocks of consensus methods (each lives here once and is reused).

* :mod:`ensclust.core.labels`    member validation, per-column relabelling, one-hot / bipartite matrices
* :mod:`ensclust.core.coassoc`   co-association matrix (sparse one-hot product)
* :mod:`ensclust.core.hierarchy` agglomerative clustering on a similarity, cut at exactly k clusters
* :mod:`ensclust.core.spectral`  spectral embedding, discretisation, Ncut on a (bipartite) graph
"""
