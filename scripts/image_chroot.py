"""Build deploy/Dockerfile into a directory and run its commands, without a container engine.

For machines that have no Docker engine (CI here): the Dockerfile's own steps (RUN, COPY, ENV,
WORKDIR, ARG) are carried out in a copy of the base root file system (deploy/base-image.sh), each
RUN in a chroot with a private mount namespace (its own /proc, the host's /dev and /sys) and the
host's network, as `docker build` does.  `run` starts a command of the built image the same way:
on the host's network (loopback), never a bridge.  Root only.

    python -m scripts.image_chroot build --base /var/tmp/judge-rootfs-bookworm --rootfs DIR
    python -m scripts.image_chroot run --rootfs DIR [--bind /tmp/judge-slots] -- judge-worker
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONFIG = '.judge-image.json'  # ENV, WORKDIR and CMD of the built image, kept in its root
BUILD_CA = '/run/judge-build-ca.crt'
HOST_CA = '/etc/ssl/certs/ca-certificates.crt'
DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
logger = logging.getLogger('scripts.image_chroot')
_VAR = re.compile(r'\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)')


def instructions(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` of a Dockerfile, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ''
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith('#')):
            continue
        if line.rstrip().endswith('\\'):
            pending += line.rstrip()[:-1]
            continue
        full = pending + line
        pending = ''
        op, _, args = full.strip().partition(' ')
        out.append((op.upper(), args.strip()))
    return out


def expand(value: str, env: dict[str, str]) -> str:
    """Docker's ``$VAR`` / ``${VAR}`` substitution in ENV, WORKDIR and COPY arguments."""
    return _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ''), value)


def chroot_command(rootfs: Path, argv: list[str], env: dict[str, str], cwd: str, binds: list[str]) -> list[str]:
    """``argv`` in ``rootfs``: a private mount namespace with /proc, /dev, /sys and ``binds`` mounted."""
    r = shlex.quote(str(rootfs))
    steps = [
        f'mount --bind {r} {r}',  # the root is a mount point, as in a container (the sandbox remounts it)
        f'mount -t proc proc {r}/proc',
        f'mount --rbind /dev {r}/dev',
        f'mount --rbind /sys {r}/sys',
    ]
    for bind in binds:
        src, _, dst = bind.partition(':')
        dst = dst or src
        if os.path.isfile(src):  # a file mounts over a file
            steps.append(f'mkdir -p {r}{shlex.quote(os.path.dirname(dst))} && touch {r}{shlex.quote(dst)}')
        else:
            steps.append(f'mkdir -p {shlex.quote(src)} {r}{shlex.quote(dst)}')
        steps.append(f'mount --bind {shlex.quote(src)} {r}{shlex.quote(dst)}')
    env_args = ' '.join(shlex.quote(f'{k}={v}') for k, v in env.items())
    inner = f'cd {shlex.quote(cwd)} && exec ' + ' '.join(shlex.quote(a) for a in argv)
    steps.append(f'exec chroot {r} /usr/bin/env -i {env_args} /bin/sh -c {shlex.quote(inner)}')
    return ['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-euc', ' && '.join(steps)]


def _copy(context: Path, rootfs: Path, args: str, env: dict[str, str], workdir: str) -> None:
    *sources, dest = shlex.split(expand(args, env))
    target = rootfs / os.path.join(workdir, dest).lstrip('/')
    for src in sources:
        path = (context / src).resolve()
        if not path.is_relative_to(context):
            raise ValueError(f'COPY {src}: outside the build context')
        if path.is_dir():
            shutil.copytree(path, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns('__pycache__'))
        else:
            into = target / path.name if dest.endswith('/') or target.is_dir() else target
            into.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, into)


def build(
    base: Path, rootfs: Path, dockerfile: Path, context: Path, build_args: dict[str, str], build_ca: str = ''
) -> None:
    """Carry out ``dockerfile`` in a fresh copy of ``base`` at ``rootfs``.

    ``build_ca``: a CA bundle that RUN steps trust for HTTPS (pip), e.g. the host's when it sits
    behind a TLS-inspecting proxy; mounted for each step only, never copied into the image.
    """
    binds, run_env = [], {}
    if build_ca:
        binds = [f'{build_ca}:{BUILD_CA}']
        run_env = {'PIP_CERT': BUILD_CA, 'SSL_CERT_FILE': BUILD_CA, 'REQUESTS_CA_BUNDLE': BUILD_CA}
    if rootfs.exists():
        shutil.rmtree(rootfs)
    subprocess.run(['cp', '-a', f'{base}/.', str(rootfs)], check=True)
    shutil.copy2('/etc/resolv.conf', rootfs / 'etc' / 'resolv.conf')  # as docker build does
    env: dict[str, str] = {'PATH': DEFAULT_PATH}
    args: dict[str, str] = {}
    workdir, cmd = '/', []
    context = context.resolve()
    for op, text in instructions(dockerfile.read_text()):
        logger.info('%s %s', op, text.splitlines()[0][:100])
        if op == 'ARG':
            name, _, default = text.partition('=')
            args[name] = build_args.get(name, default)
        elif op == 'FROM':
            logger.info('  base: %s (as %s)', base, expand(text, args))
        elif op == 'ENV':
            for pair in shlex.split(text.replace('\\\n', ' ')):
                name, _, value = pair.partition('=')
                env[name] = expand(value, env)
        elif op == 'WORKDIR':
            workdir = os.path.join(workdir, expand(text, env))
            (rootfs / workdir.lstrip('/')).mkdir(parents=True, exist_ok=True)
        elif op == 'COPY':
            _copy(context, rootfs, text, env, workdir)
        elif op == 'RUN':
            step = chroot_command(rootfs, ['/bin/sh', '-c', text], {**args, **env, **run_env}, workdir, binds)
            subprocess.run(step, check=True)
        elif op == 'CMD':
            cmd = json.loads(text)
        elif op not in ('EXPOSE', 'LABEL'):
            raise ValueError(f'{op}: not supported here')
    (rootfs / CONFIG).write_text(json.dumps({'env': env, 'workdir': workdir, 'cmd': cmd}))


def image_config(rootfs: Path) -> dict[str, Any]:
    """ENV (``env``), WORKDIR (``workdir``) and CMD (``cmd``) recorded by `build`."""
    config: dict[str, Any] = json.loads((rootfs / CONFIG).read_text())
    return config


def run_command(rootfs: Path, argv: list[str], extra_env: dict[str, str], binds: list[str]) -> list[str]:
    """The command line that runs ``argv`` (the image's CMD when empty) in the built image."""
    config = image_config(rootfs)
    env = {**config['env'], **extra_env}
    return chroot_command(rootfs, argv or list(config['cmd']), env, str(config['workdir']), binds)


def main(argv: list[str] | None = None) -> int:
    """`build` or `run` (see the module docstring)."""
    logging.basicConfig(level=logging.INFO, format='%(name)s: %(message)s')
    parser = argparse.ArgumentParser(prog='python -m scripts.image_chroot', description=__doc__.split('\n')[0])
    sub = parser.add_subparsers(dest='action', required=True)
    b = sub.add_parser('build')
    b.add_argument('--base', type=Path, required=True, help='root file system from deploy/base-image.sh')
    b.add_argument('--rootfs', type=Path, required=True, help='where to build the image (replaced)')
    b.add_argument('--dockerfile', type=Path, default=ROOT / 'deploy' / 'Dockerfile')
    b.add_argument('--context', type=Path, default=ROOT)
    b.add_argument('--build-arg', action='append', default=[], help='NAME=VALUE')
    b.add_argument(
        '--build-ca',
        default=HOST_CA if os.path.isfile(HOST_CA) else '',
        help=f"CA bundle RUN steps trust for HTTPS (default: the host's {HOST_CA}; '' for none)",
    )
    r = sub.add_parser('run')
    r.add_argument('--rootfs', type=Path, required=True)
    r.add_argument('--bind', action='append', default=[], help='SRC[:DST] host directory to mount inside')
    r.add_argument('--env', action='append', default=[], help='NAME=VALUE added to the image ENV')
    r.add_argument('command', nargs='*')
    ns = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error('needs root (chroot, mounts)')
    if ns.action == 'build':
        build_args = dict(a.split('=', 1) for a in ns.build_arg)
        build(ns.base, ns.rootfs, ns.dockerfile, ns.context, build_args, ns.build_ca)
        return 0
    env = dict(e.split('=', 1) for e in ns.env)
    os.execvp('unshare', run_command(ns.rootfs, ns.command, env, ns.bind))


if __name__ == '__main__':
    sys.exit(main())
