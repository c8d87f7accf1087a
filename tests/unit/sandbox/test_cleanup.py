"""Iterative clean-up of what an execution wrote (`judge.sandbox.server.files.cleanup`): any depth, width or
entry kind."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

from judge.sandbox.server.files.cleanup import remove_entry, remove_tree


def _deep(root: Path, depth: int) -> None:
    """A chain of ``depth`` directories under ``root`` (beyond PATH_MAX: built relative to descriptors)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir('d' * 50, dir_fd=fd)
            child = os.open('d' * 50, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open('bottom', os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd), 'w') as f:
            f.write('x')
    finally:
        os.close(fd)


def test_a_tree_deeper_than_the_recursion_limit_and_path_max(tmp_path: Path) -> None:
    root = tmp_path / 'w1'
    root.mkdir()
    _deep(root, 3000)  # 3000 x 51 characters: far beyond PATH_MAX (4096) and Python's recursion limit
    assert remove_tree(str(root)) == 3000 + 2  # the chain, the bottom file, the root
    assert not root.exists()


def test_wide_trees_odd_entries_and_locked_directories(tmp_path: Path) -> None:
    outside = tmp_path / 'outside'
    outside.mkdir()
    (outside / 'keep').write_text('keep')
    root = tmp_path / 'w2'
    (root / 'sub').mkdir(parents=True)
    for i in range(3000):
        (root / f'f{i}').touch()
    for i in range(300):
        (root / 'sub' / f'd{i}').mkdir()
        (root / 'sub' / f'd{i}' / 'x').touch()
    (root / 'link_dir').symlink_to(outside)
    (root / 'link_file').symlink_to(outside / 'keep')
    (root / 'loop').symlink_to('loop')
    os.mkfifo(root / 'fifo')
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / 'sock'))
    sock.close()
    (root / 'locked' / 'a').mkdir(parents=True)
    (root / 'locked' / 'a' / 'secret').write_text('x')
    for path in (root / 'locked' / 'a', root / 'locked'):
        path.chmod(0)
    remove_tree(str(root))
    assert not root.exists()
    assert (outside / 'keep').read_text() == 'keep' and outside.is_dir()  # links never followed


def test_keep_root_empties_and_entries_of_any_kind(tmp_path: Path) -> None:
    root = tmp_path / 'shm'
    (root / 'a' / 'b').mkdir(parents=True)
    (root / 'f').write_text('x')
    root.chmod(stat.S_IRWXU)
    assert remove_tree(str(root), keep_root=True) == 3
    assert root.is_dir() and list(root.iterdir()) == []
    assert remove_tree(str(tmp_path / 'missing')) == 1  # already gone: nothing to do
    (tmp_path / 'file').write_text('x')
    (tmp_path / 'link').symlink_to(tmp_path / 'file')
    remove_entry(str(tmp_path / 'link'))
    assert (tmp_path / 'file').exists() and not (tmp_path / 'link').exists()
    remove_entry(str(tmp_path / 'file'))
    remove_entry(str(tmp_path / 'file'))
    assert not (tmp_path / 'file').exists()


def test_a_root_that_is_a_symlink_is_removed_not_followed(tmp_path: Path) -> None:
    target = tmp_path / 'target'
    target.mkdir()
    (target / 'keep').write_text('x')
    (tmp_path / 'w3').symlink_to(target)
    remove_tree(str(tmp_path / 'w3'))
    assert not (tmp_path / 'w3').is_symlink() and (target / 'keep').exists()


def test_work_dir_removal_unlinks_links_and_recurses_without_following(tmp_path: Path) -> None:
    from judge.sandbox.server.files.cleanup import remove_tree as _remove_tree

    outside = tmp_path / 'outside'
    outside.mkdir()
    (outside / 'keep.txt').write_text('keep')
    flat, nested = tmp_path / 'w1', tmp_path / 'w2'
    for work in (flat, nested):
        work.mkdir()
        (work / 'source.py').write_text('print(1)')
        (work / 'link_to_dir').symlink_to(outside)
        (work / 'link_to_file').symlink_to(outside / 'keep.txt')
    (nested / 'sub' / 'deeper').mkdir(parents=True)
    (nested / 'sub' / 'deeper' / 'x').write_text('x')
    for work in (flat, nested):
        _remove_tree(str(work))
        assert not work.exists()
    _remove_tree(str(tmp_path / 'missing'))  # already gone: nothing to do, no error
    assert (outside / 'keep.txt').read_text() == 'keep'
