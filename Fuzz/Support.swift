// Shared by the fuzz targets (compiled into each with the decoder sources; see scripts/fuzz.sh).

/// Stops the run (libFuzzer reports it as a crash with the input) when a property does not hold.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("property violated: \(message())") }
}

/// Decodes `bytes` whole, then again in chunks whose sizes come from the input itself, and checks
/// that both give the same readings and counters, that every byte is counted and that the decoder
/// holds at most `bound` bytes between chunks.
func checkStreaming<D: SensorDecoder>(
    _ make: () -> D, _ bytes: UnsafeRawBufferPointer, bound: Int, pending: (D) -> Int
) {
    var whole = make()
    var expected: [SensorReading] = []
    whole.decode(bytes, into: &expected)
    require(whole.counters.bytesConsumed == bytes.count, "bytes consumed")

    var chunked = make()
    var readings: [SensorReading] = []
    var offset = 0
    var step = 0
    while offset < bytes.count {
        let size = 1 + Int(bytes[step % bytes.count] % 17)
        let end = min(bytes.count, offset + size)
        chunked.decode(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]), into: &readings)
        require(pending(chunked) <= bound, "held bytes bounded")
        offset = end
        step += 1
    }
    require(readings == expected, "chunked readings equal whole readings")
    require(chunked.counters == whole.counters, "chunked counters equal whole counters")

    var lost = make()
    var ignored: [SensorReading] = []
    lost.decode(UnsafeRawBufferPointer(rebasing: bytes[0..<(bytes.count / 2)]), into: &ignored)
    lost.connectionLost()
    lost.decode(UnsafeRawBufferPointer(rebasing: bytes[(bytes.count / 2)...]), into: &ignored)
    require(lost.counters.bytesConsumed == bytes.count, "bytes consumed across a disconnect")
}
