
ByJ(n‚”Wq’ŒszlXs`šh}sq‹eziŸ‚skš‡qy„yX‘|—r