"""Reusable harness for real kernels (:mod:`.kernel`) and real JupyterLab + Chromium (:mod:`.lab`)."""

from .kernel import REPO_ROOT, CommRecord, ExecResult, KernelHarness, KernelTimeoutError

__all__ = ["REPO_ROOT", "CommRecord", "ExecResult", "KernelHarness", "KernelTimeoutError"]
