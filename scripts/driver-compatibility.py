#!/usr/bin/env python3
"""Writes the table of docs/compatibility.md: every entry point the toolkit's
libcuda.so exports, and what vgpu's guest libcuda.so.1 does with it.

  driver-compatibility.py GUEST_LIBCUDA TOOLKIT_STUB_LIBCUDA [--check DOC]

The status of each name is read from the built library itself (a Debug build,
for its line table): a strong definition is implemented, and the source file
that defines it says how (forwarded to vgpud, or answered in the guest); a
weak one is the generated refusal (CUDA_ERROR_NOT_SUPPORTED, named in one log
line) or, for a _ptds/_ptsz name, its legacy-stream form. With --check the
table in DOC must equal the one written; the test suite runs it that way.
"""
import re
import subprocess
import sys

# How each source file of intercept/driver/src answers its calls.
FORWARDED = {"memory.cpp", "module.cpp", "launch.cpp", "stream_event.cpp", "host_memory.cpp",
             "managed_calls.cpp", "copy_2d.cpp", "stream_ordered_alloc.cpp", "host_functions.cpp",
             "graph_exec.cpp", "arrays.cpp", "textures.cpp", "virtual_memory.cpp"}
LOCAL = {"linker.cpp", "device.cpp", "context.cpp", "init.cpp", "errors.cpp", "proc_address.cpp",
         "export_tables.cpp", "occupancy.cpp", "graph.cpp", "graph_nodes.cpp", "user_objects.cpp",
         "stream_capture.cpp"}
# Implemented functions that are forwarded although their file answers in the guest.
FORWARDED_NAMES = {"cuCtxSetLimit"}  # the device heap's size reaches the host
# Implemented functions that answer in the guest although their file forwards.
LOCAL_NAMES = {"cuArrayGetDescriptor_v2", "cuArray3DGetDescriptor_v2", "cuMipmappedArrayGetLevel",
               "cuTexObjectGetResourceDesc", "cuTexObjectGetTextureDesc",
               "cuTexObjectGetResourceViewDesc", "cuSurfObjectGetResourceDesc",
               "cuMemGetAddressRange_v2", "cuPointerGetAttribute", "cuPointerGetAttributes",
               "cuMemHostRegister", "cuMemHostRegister_v2", "cuMemHostUnregister",
               "cuMemHostGetFlags", "cuModuleGetLoadingMode", "cuStreamGetPriority",
               "cuStreamGetFlags", "cuStreamGetId", "cuStreamGetCtx", "cuStreamGetDevice",
               "cuStreamIsCapturing", "cuStreamGetCaptureInfo_v2", "cuStreamGetCaptureInfo_v3",
               "cuThreadExchangeStreamCaptureMode", "cuFuncGetName", "cuKernelGetName",
               "cuFuncGetParamInfo", "cuKernelGetParamInfo", "cuFuncIsLoaded", "cuFuncLoad",
               "cuKernelGetFunction", "cuKernelGetLibrary", "cuFuncGetModule",
               "cuLibraryGetModule", "cuFuncSetCacheConfig", "cuKernelSetCacheConfig",
               "cuFuncSetSharedMemConfig", "cuFuncSetAttribute", "cuKernelSetAttribute",
               "cuMemAdvise", "cuMemAdvise_v2", "cuMemRangeGetAttribute", "cuMemRangeGetAttributes",
               "cuStreamAttachMemAsync", "cuStreamGetCtx_v2", "cuStreamGetAttribute",
               "cuStreamSetAttribute", "cuStreamCopyAttributes", "cuDeviceGetDefaultMemPool",
               "cuDeviceGetMemPool", "cuDeviceSetMemPool", "cuMemGetDefaultMemPool",
               "cuMemGetMemPool", "cuMemSetMemPool", "cuMemPoolCreate", "cuMemPoolDestroy",
               "cuMemPoolTrimTo", "cuMemPoolSetAttribute", "cuMemPoolGetAttribute",
               "cuMemPoolSetAccess", "cuMemPoolGetAccess", "cuGraphInstantiateWithFlags",
               "cuGraphInstantiateWithParams", "cuGraphExecDestroy", "cuGraphUpload",
               "cuGraphExecUpdate_v2", "cuGraphExecKernelNodeSetParams_v2",
               "cuGraphExecMemcpyNodeSetParams", "cuGraphExecMemsetNodeSetParams",
               "cuGraphExecHostNodeSetParams", "cuGraphExecGetFlags", "cuDeviceGraphMemTrim",
               "cuDeviceGetGraphMemAttribute", "cuDeviceSetGraphMemAttribute",
               "cuMemHostGetDevicePointer_v2", "cuMemGetAllocationGranularity", "cuMemCreate",
               "cuMemRelease", "cuMemSetAccess", "cuMemGetAccess", "cuMemRetainAllocationHandle",
               "cuMemGetAllocationPropertiesFromHandle"}


def symbols(args):
    out = subprocess.run(["nm", "-D", "--defined-only"] + args, check=True, capture_output=True,
                         text=True).stdout
    return out.splitlines()


def main():
    guest, stub = sys.argv[1], sys.argv[2]
    check = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--check" else None
    toolkit = sorted({l.split()[2] for l in symbols([stub]) if len(l.split()) >= 3})
    kinds = {}
    for line in symbols(["-l", guest]):
        m = re.match(r"^\S+ (\w) (\S+)(?:\s+(\S+):\d+)?", line)
        if not m:
            continue
        kind, name, path = m.group(1), m.group(2), m.group(3) or ""
        kinds[name] = (kind, path.rsplit("/", 1)[-1])
    rows, counts = [], {}
    for name in toolkit:
        kind, source = kinds.get(name, ("-", ""))
        legacy = re.sub(r"_(ptds|ptsz)$", "", name)
        if kind == "T":
            status = "forwarded" if name in FORWARDED_NAMES \
                else "answered in the guest" if (source in LOCAL or name in LOCAL_NAMES) \
                else "forwarded" if source in FORWARDED else f"implemented ({source})"
        elif kind == "W" and legacy != name and kinds.get(legacy, ("",))[0] == "T":
            status = f"as {legacy} (one default stream per VM)"
        elif kind == "W":
            status = "refused: CUDA_ERROR_NOT_SUPPORTED"
        else:
            status = "MISSING"
        key = status.split(" (")[0] if status.startswith("as ") else status
        key = "as its legacy-stream form" if key.startswith("as ") else key
        counts[key] = counts.get(key, 0) + 1
        rows.append(f"| `{name}` | {status} |")
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    table = "\n".join([f"<!-- generated by scripts/driver-compatibility.py: {len(toolkit)} "
                       f"entry points: {summary} -->",
                       "| entry point | in a VM |", "| --- | --- |"] + rows) + "\n"
    if check:
        text = open(check).read()
        start = text.find("<!-- generated by scripts/driver-compatibility.py")
        if start < 0 or text[start:start + len(table)] != table:
            sys.stderr.write(f"{check}: the driver table is not what the library does; "
                             "regenerate it with scripts/driver-compatibility.py\n")
            sys.exit(1)
        print(f"{check}: driver table matches ({summary})")
        return
    sys.stdout.write(table)


main()
