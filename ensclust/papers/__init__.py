"""Paper reproductions: manifests of which configs make up each paper table, their assembly as the paper
prints them, the scorecard, and cost estimates (``ensclust reproduce``)."""
