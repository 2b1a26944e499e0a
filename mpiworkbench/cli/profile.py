"""``mpiworkbench profile create [--name mpi]``: an ipcluster profile for MPI engines."""

from __future__ import annotations

import argparse
import sys

from mpiworkbench.core import implementations


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "profile",
        help="create IPython cluster profiles for ipcluster",
        description="Write an IPython profile so `ipcluster start -n 4 --profile=NAME` starts MPI engines.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="write (or overwrite) a profile")
    create.add_argument("--name", default=None,
                        help="profile name (default: mpi, or mpi-NAME for --mpi NAME other than mpich)")
    create.add_argument("--mpi", default=None, choices=implementations.names(),
                        help=f"MPI implementation of the engines (default: ${implementations.VARIABLE}, else "
                             f"{implementations.DEFAULT_SAID})")
    create.add_argument("--launcher", default="mpi",
                        help="engines started by mpiexec here (mpi, default) or as one Slurm job (slurm)")
    create.add_argument("--ip", default="127.0.0.1", help="controller interface (default: loopback only)")
    create.add_argument("--ipython-dir", default=None, help="IPython directory (default: IPython's)")
    encrypt = create.add_mutually_exclusive_group()
    encrypt.add_argument("--encrypt", dest="encrypt", action="store_true", default=None,
                         help="encrypt the cluster's traffic (CurveZMQ); the default beyond loopback")
    encrypt.add_argument("--no-encrypt", dest="encrypt", action="store_false",
                         help="only sign every message with the connection files' key (the default on loopback)")
    create.set_defaults(func=run_create)


def run_create(args: argparse.Namespace) -> int:
    import warnings

    from mpiworkbench.client.cluster.profiles import create_profile, profile_name  # lazy: the client imports ipyparallel and IPython; only `profile create` needs them

    args.name = args.name or profile_name(args.mpi or implementations.current().name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = create_profile(args.name, launcher=args.launcher, ip=args.ip, ipython_dir_=args.ipython_dir,
                              encrypt=args.encrypt, mpi=args.mpi)
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    print(f"profile {args.name!r} written to {path}")
    print(f"start it with: ipcluster start -n 2 --profile={args.name}")
    return 0
