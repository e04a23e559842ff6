"""Task modules, one per domain; names are ``<domain>.<verb>``."""
