/// libFuzzer target: the NMEA 0183 decoder on arbitrary bytes (see scripts/fuzz.sh).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard size > 0 else { return 0 }
    checkStreaming({ NMEADecoder(maxLineLength: 96) }, bytes, bound: 95, pending: \.pendingByteCount)
    checkStreaming({ NMEADecoder() }, bytes, bound: 255, pending: \.pendingByteCount)
    return 0
}
