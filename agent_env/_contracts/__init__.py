"""What the engine asks of its parts, in the kernel, so that the engine never imports a part.

Each part (sandbox, mcp, users, judges) implements a protocol here and reads its section of the task
file by a settings model here; the engine finds what a part runs through `registry`, where each part
registers itself as an entry point of this distribution (pyproject.toml), and another installed
package can add a sandbox provider the same way.
"""
