"""Code used on both sides of the trust boundary, in separate processes: message framing (`wire`),
tensor byte frames (`tensors`), the CUDA path's sealed memory file (`shm`), loading and calling programs
(`harness`: inputs, forwards, timing) and output comparison (`compare`).

None of it trusts what arrives from the other side: the judge decodes frames only to the shapes and dtypes
it expects and bounds what it reads. Importing a module here gives no authority; where it runs decides.
"""
