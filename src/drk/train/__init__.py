"""Training: the RL objective's math (`drk.train.algos`) and the trainers built on it."""
