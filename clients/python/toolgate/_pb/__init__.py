"""gRPC stubs generated from proto/toolgate/v1 by scripts/gen_stubs.py. Do not edit."""
