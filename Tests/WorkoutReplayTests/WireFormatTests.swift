import Foundation
import Testing
import WorkoutModel
import WorkoutSensors
import WorkoutSimulator

#if canImport(Glibc)
    import Glibc
#endif

/// Every port's bytes for a whole race.
private func wire(_ name: String, seed: UInt64) throws -> [WirePort: [UInt8]] {
    var simulator = WatchSimulator(scenario: try Scenario.load(name), seed: seed)
    var emitter = WireEmitter(start: simulator.start)
    var streams = emitter.preamble()
    while let second = simulator.next() {
        for (port, bytes) in emitter.encode(second) { streams[port, default: []] += bytes }
    }
    return streams
}

/// Splits an ANT byte stream into frames, checking sync, length and checksum as a receiver must.
private func antFrames(_ bytes: [UInt8]) -> [[UInt8]]? {
    var frames: [[UInt8]] = []
    var index = 0
    while index < bytes.count {
        guard bytes[index] == 0xA4, index + 1 < bytes.count else { return nil }
        let end = index + 4 + Int(bytes[index + 1])  // sync, length, id, payload, checksum
        guard end <= bytes.count else { return nil }
        let frame = Array(bytes[index..<end])
        guard frame.dropLast().reduce(0, ^) == frame[frame.count - 1] else { return nil }
        frames.append(frame)
        index = end
    }
    return frames
}

/// Lines of `$…*HH` text, each checked: HH is the XOR of the bytes between `$` and `*`.
private func checkedLines(_ bytes: [UInt8]) -> [String]? {
    let text = String(decoding: bytes, as: UTF8.self)
    var lines: [String] = []
    for line in text.split(separator: "\r\n") {
        guard line.first == "$", let star = line.lastIndex(of: "*") else { return nil }
        let body = line[line.index(after: line.startIndex)..<star]
        let sum = body.utf8.reduce(UInt8(0), ^)
        guard UInt8(line[line.index(after: star)...], radix: 16) == sum else { return nil }
        lines.append(String(body))
    }
    return lines
}

@Suite("Simulator: bytes in real wire formats")
struct WireFormatTests {
    @Test func sameSeedSameBytesDifferentSeedsDiffer() throws {
        let first = try wire("sprint-pool", seed: 4)
        #expect(first == (try wire("sprint-pool", seed: 4)))
        let other = try wire("sprint-pool", seed: 5)
        #expect(first[.ant] != other[.ant])
    }

    @Test func nmeaChecksumsAreComputedNotCopied() {
        let body = "GPGGA,123519,4807.038,N,01131.324,E,1,08,0.9,545.4,M,46.9,M,,"
        let sum = body.utf8.reduce(UInt8(0), ^)
        let sentence = String(decoding: NMEA.sentence(body), as: UTF8.self)
        #expect(sentence == "$\(body)*\(String(format: "%02X", sum))\r\n")
        #expect(sum != 0x47, "the widely copied *47 does not match this sentence")
        #expect(NMEA.coordinate(48.1173, degreesWidth: 2) == "4807.0380")
        #expect(NMEA.coordinate(11.516666667, degreesWidth: 3) == "01131.0000")
    }

    @Test func everyStreamIsWellFormed() throws {
        let scenario = try Scenario.load("sprint-pool")
        let streams = try wire("sprint-pool", seed: 7)
        // ANT: every frame framed and checksummed; one heart-rate broadcast per heart-rate sample.
        let frames = try #require(antFrames(streams[.ant] ?? []))
        var simulator = WatchSimulator(scenario: scenario, seed: 7)
        var recorder = GroundTruthRecorder(scenario: scenario)
        var heartRateSamples = 0
        while let second = simulator.next() {
            recorder.observe(second)
            heartRateSamples += second.samples.filter { $0.type == .heartRate }.count
        }
        let truth = recorder.result(of: simulator)
        let heartRateBroadcasts = frames.filter { $0[2] == 0x4E && $0[3] == 0 }
        #expect(heartRateBroadcasts.count == heartRateSamples)
        #expect(
            frames.filter { $0[2] == 0x51 }.map { $0[6] } == [120, 121, 11, 124], "channel ids announce the profiles")
        // NMEA: checksums hold; one GGA and one RMC per second with a fix.
        let gps = try #require(checkedLines(streams[.gps] ?? []))
        #expect(gps.filter { $0.hasPrefix("GPGGA") }.count == gps.filter { $0.hasPrefix("GPRMC") }.count)
        // Watch-link: checksums hold; a NEXT per leg change, a STOP at the finish, a LEN per length.
        let watch = try #require(checkedLines(streams[.watch] ?? []))
        #expect(watch.first == "WL1,HELLO,workout-engine simulated watch")
        #expect(watch.filter { $0.hasSuffix(",NEXT") }.count == scenario.legs.count - 1)
        #expect(watch.filter { $0.hasSuffix(",STOP") }.count == 1)
        let lengths = truth.legs.flatMap(\.lengths)
        #expect(watch.filter { $0.hasPrefix("WL1,LEN,") }.count == lengths.count)
    }

    @Test func bytesPassThroughAPseudoTerminalUnchanged() throws {
        let bytes = Array((try wire("sprint", seed: 2)[.ant] ?? []).prefix(20_000))
        #expect(bytes.contains(0x0D) || bytes.contains(0x0A) || bytes.contains(0x11), "binary bytes a tty would mangle")
        let terminal = try PseudoTerminal()
        let reader = open(terminal.path, O_RDONLY | O_NOCTTY | O_NONBLOCK)
        #expect(reader >= 0)
        defer { close(reader) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var offset = 0
        let deadline = Date().addingTimeInterval(10)
        while received.count < bytes.count, Date() < deadline {
            if offset < bytes.count {
                let chunk = Array(bytes[offset..<min(offset + 1024, bytes.count)])
                try terminal.write(chunk)
                offset += chunk.count
            }
            let count = read(reader, &buffer, buffer.count)
            if count > 0 { received += buffer[0..<count] } else { usleep(1000) }
        }
        #expect(received == bytes)
    }
}
