/// libFuzzer target: the watch-link decoder (with tunnelled GATT values) on arbitrary bytes (see
/// scripts/fuzz.sh).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard size > 0 else { return 0 }
    checkStreaming({ WatchLinkDecoder() }, bytes, bound: 255, pending: \.pendingByteCount)
    checkStreaming({ WatchLinkDecoder(maxLineLength: 40) }, bytes, bound: 39, pending: \.pendingByteCount)
    return 0
}
