import Foundation
import Testing
import WorkoutSensors

// Byte vectors are built here from the specifications, checksums computed by these helpers (never
// copied from examples).

/// `$` + body + `*HH` CR LF, HH the XOR of the body's bytes (NMEA 0183 and watch-link).
func textLine(_ body: String, checksum: UInt8? = nil) -> [UInt8] {
    let sum = checksum ?? body.utf8.reduce(UInt8(0), ^)
    return Array("$\(body)*\(String(format: "%02X", sum))\r\n".utf8)
}

/// The recorder and mapper tests' time origin, and the date `seconds` after it.
let origin = Date(timeIntervalSinceReferenceDate: 800_000_000)
func at(_ seconds: Double) -> Date { origin.addingTimeInterval(seconds) }

/// A GPS RMC sentence `second` seconds after `origin`, `metres` north of a fixed point.
func rmc(_ second: Double, north metres: Double) -> [UInt8] {
    NMEA.rmc(time: at(second), latitude: 47.9 + metres / 111_195, longitude: 11.3, speed: 5, course: 0)
}

/// An ANT serial frame: A4, length, id, payload, XOR of all preceding bytes (sync included).
func antFrame(_ id: UInt8, _ payload: [UInt8], corruptChecksum: Bool = false) -> [UInt8] {
    var bytes: [UInt8] = [0xA4, UInt8(payload.count), id] + payload
    let sum = bytes.reduce(UInt8(0), ^)
    bytes.append(corruptChecksum ? sum ^ 0x5A : sum)
    return bytes
}

/// A broadcast data frame (0x4E) on `channel` with 8 data bytes.
func broadcast(_ channel: UInt8, _ data: [UInt8]) -> [UInt8] {
    precondition(data.count == 8)
    return antFrame(0x4E, [channel] + data)
}

/// A channel-id response (0x51).
func channelID(_ channel: UInt8, number: UInt16, type: UInt8, transmission: UInt8 = 1) -> [UInt8] {
    antFrame(0x51, [channel, UInt8(number & 0xFF), UInt8(number >> 8), type, transmission])
}

/// Little-endian bytes of a 16-bit value.
func le16(_ value: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)] }

/// Little-endian bytes of a 32-bit value.
func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

extension SensorDecoder {
    /// Decodes `bytes` in chunks of the given sizes (cycled), returning every reading.
    mutating func decode(_ bytes: [UInt8], chunkSizes: [Int]) -> [SensorReading] {
        var readings: [SensorReading] = []
        var offset = 0
        var index = 0
        while offset < bytes.count {
            let size = max(1, chunkSizes[index % chunkSizes.count])
            let end = min(bytes.count, offset + size)
            decode(Array(bytes[offset..<end]), into: &readings)
            offset = end
            index += 1
        }
        return readings
    }
}

/// Checks that splitting `bytes` at every position into two chunks gives the same readings and
/// counters as one chunk.
func expectSplitInvariant<D: SensorDecoder>(
    _ make: () -> D, _ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation
) {
    var whole = make()
    let expected = whole.decode(bytes)
    #expect(!expected.isEmpty, sourceLocation: sourceLocation)
    for split in 0...bytes.count {
        var decoder = make()
        var readings: [SensorReading] = []
        decoder.decode(Array(bytes[..<split]), into: &readings)
        decoder.decode(Array(bytes[split...]), into: &readings)
        #expect(readings == expected, "split at \(split)", sourceLocation: sourceLocation)
        #expect(decoder.counters == whole.counters, "split at \(split)", sourceLocation: sourceLocation)
    }
    // And one byte at a time.
    var bytewise = make()
    #expect(bytewise.decode(bytes, chunkSizes: [1]) == expected, sourceLocation: sourceLocation)
    #expect(bytewise.counters == whole.counters, sourceLocation: sourceLocation)
}

/// Whether two numbers agree within `tolerance`.
func close(_ a: Double?, _ b: Double, _ tolerance: Double = 1e-9) -> Bool {
    guard let a else { return false }
    return abs(a - b) <= tolerance
}
