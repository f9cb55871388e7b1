import Testing
import WorkoutSensors

/// A deterministic xorshift generator, so failures reproduce.
private struct Random {
    var state: UInt64

    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }

    mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
}

/// Valid frames of every protocol interleaved with random garbage and random corruption.
private func noisyStream(_ random: inout Random) -> [UInt8] {
    var bytes: [UInt8] = []
    for index in 0..<60 {
        var frame: [UInt8]
        switch random.next() % 5 {
        case 0: frame = textLine("GPGGA,1200\(10 + index % 50),4807.038,N,01131.324,E,1,08,0.9,545.4,M,46.9,M,,")
        case 1: frame = broadcast(UInt8(index % 4), random.bytes(8))
        case 2: frame = channelID(UInt8(index % 4), number: 7, type: [120, 121, 11, 124][index % 4])
        case 3:
            frame = WatchLink.gatt(
                milliseconds: index, characteristic: 0x2A63, payload: random.bytes(Int(random.next() % 12)))
        default: frame = WatchLink.button(milliseconds: index, .lap)
        }
        if random.next() % 7 == 0, !frame.isEmpty {
            frame[Int(random.next() % UInt64(frame.count))] ^= UInt8(truncatingIfNeeded: random.next() | 1)
        }
        bytes += frame + random.bytes(Int(random.next() % 6))
    }
    return bytes
}

@Suite("Decoders on random and corrupted input")
struct RandomInputTests {
    @Test(arguments: 1...20)
    func chunkingNeverChangesTheResultAndNothingTraps(seed: UInt64) {
        var random = Random(state: seed &* 0x9E37_79B9_7F4A_7C15 | 1)
        let bytes = noisyStream(&random) + random.bytes(300)
        func check<D: SensorDecoder>(_ make: () -> D) {
            var whole = make()
            let expected = whole.decode(bytes)
            var chunked = make()
            let sizes = (0..<16).map { _ in Int(random.next() % 40) + 1 }
            #expect(chunked.decode(bytes, chunkSizes: sizes) == expected)
            #expect(chunked.counters == whole.counters)
            #expect(whole.counters.bytesConsumed == bytes.count)
        }
        check { NMEADecoder() }
        check { ANTDecoder() }
        check { WatchLinkDecoder() }
    }

    @Test func pureNoiseIsSkippedWithinBounds() {
        var random = Random(state: 42)
        var nmea = NMEADecoder()
        var ant = ANTDecoder()
        var watch = WatchLinkDecoder()
        var readings: [SensorReading] = []
        for _ in 0..<200 {
            let chunk = random.bytes(Int(random.next() % 512))
            nmea.decode(chunk, into: &readings)
            ant.decode(chunk, into: &readings)
            watch.decode(chunk, into: &readings)
            #expect(nmea.pendingByteCount < 256 && watch.pendingByteCount < 256 && ant.pendingByteCount < 36)
        }
        #expect(nmea.counters.resyncBytesSkipped > 0 && ant.counters.resyncBytesSkipped > 0)
        #expect(nmea.counters.framesDecoded == 0 && watch.counters.framesDecoded == 0)
    }
}
