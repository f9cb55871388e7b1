/// libFuzzer target: the ANT / ANT+ decoder on arbitrary bytes (see scripts/fuzz.sh).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard size > 0 else { return 0 }
    // A frame is at most 4 + 32 bytes: the decoder never holds a whole one.
    checkStreaming({ ANTDecoder() }, bytes, bound: 35, pending: \.pendingByteCount)
    let preset = ANTDecoder.Configuration(
        wheelCircumference: 1.5, stopAfterMessages: 2,
        channels: [
            0: ANTDeviceID(number: 1, type: 120), 1: ANTDeviceID(number: 2, type: 121),
            2: ANTDeviceID(number: 3, type: 11), 3: ANTDeviceID(number: 4, type: 124),
            4: ANTDeviceID(number: 5, type: 122), 5: ANTDeviceID(number: 6, type: 123),
        ])
    checkStreaming({ ANTDecoder(configuration: preset) }, bytes, bound: 35, pending: \.pendingByteCount)
    return 0
}
