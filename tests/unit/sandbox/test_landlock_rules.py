"""Which file-system rights Landlock handles at each ABI version (`judge.sandbox.kernel.landlock`)."""

from __future__ import annotations

from judge.sandbox.kernel import landlock


def test_handled_fs_access_by_abi() -> None:
    assert landlock.handled_fs_access(0) == 0
    assert landlock.handled_fs_access(1) == (1 << 13) - 1
    assert landlock.handled_fs_access(2) & landlock.ACCESS_FS_REFER
    assert not landlock.handled_fs_access(2) & landlock.ACCESS_FS_TRUNCATE
    assert landlock.handled_fs_access(4) & landlock.ACCESS_FS_TRUNCATE
    assert not landlock.handled_fs_access(4) & landlock.ACCESS_FS_IOCTL_DEV
    assert landlock.handled_fs_access(7) == (1 << 16) - 1
