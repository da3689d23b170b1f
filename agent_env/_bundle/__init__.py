"""How `agent_env._bundle.reader` reads a bundle, part by part: the folder and its files (`folder`), the
bundle's own Python (`code`), its tasks (`tasks`), the cross-checks between what a task names and what
the bundle defines, with their "did you mean" hints (`checks`), and its reference plays (`solutions`).
Each part reports its problems to the one `BundleFolder`, so a load lists every problem at once."""
