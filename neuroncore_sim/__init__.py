"""neuroncore_sim: a cycle-approximate simulator of the AWS NeuronCore-v2 for NKI kernels."""
