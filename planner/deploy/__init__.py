"""Hand-over packages: what the plan writes under deploy/ so a user can run the chosen candidate without the
planner, and `planner verify`, which checks such a package on the machine it was copied to.

- package: choose the candidates to package (the winner, each roadmap phase's best) and write each one:
  the plugin's artifact and run.py (`Plugin.package`), sample inputs with the original model's outputs,
  requirements.txt, README.md and manifest.json.
- manifest: the manifest's file hashes, written and checked.
- samples: the sample inputs and the original's reference outputs on them (samples.npz).
- runfile: the text the engine adds to a package (run.py's common part, README.md, requirements.txt).
- verify: the files against the manifest, then run.py in a fresh process: its outputs judged by the plan's
  fidelity rule, its p50 timed by the plan's method against the recorded one.
"""

from planner.deploy.package import DEPLOY_DIR, write_deployments
from planner.deploy.verify import PackageVerdict, verify_path

__all__ = ["DEPLOY_DIR", "PackageVerdict", "verify_path", "write_deployments"]
