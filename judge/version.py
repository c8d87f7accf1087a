"""The package version, read by the build backend."""

VERSION = '0.1.0'
