"""Experiments: YAML configs, parameter grids, the resumable cell runner, tuning policies, reports,
comparison with the papers' tables, parameter sweeps and plots.

    from ensclust.experiment import load_config, run_experiment
    root = run_experiment(load_config("ensclust/configs/demo.yaml"))
"""

from ensclust.experiment.config import ExperimentConfig, load_config, load_config_text
from ensclust.experiment.runner import plan_cells, run_experiment

__all__ = ["ExperimentConfig", "load_config", "load_config_text", "plan_cells", "run_experiment"]
