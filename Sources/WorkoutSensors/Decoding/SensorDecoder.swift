/// A streaming decoder: takes bytes as they arrive, in chunks of any size, and appends the readings of
/// every complete frame to an array.
///
/// Frames may be split across chunks at any byte (the partial frame at a chunk's end is kept for the
/// next one), garbage between frames is skipped, and a bad frame is dropped and counted: decoders
/// never trap on any input, and the bytes they hold are bounded.
public protocol SensorDecoder: Sendable {
    /// What the decoder has seen so far.
    var counters: DecoderCounters { get }

    /// Decodes `chunk`, appending the readings of each frame it completes, in order.
    mutating func decode(_ chunk: UnsafeRawBufferPointer, into readings: inout [SensorReading])

    /// The byte stream was interrupted (device unplugged, port reopened): drops the partial frame
    /// and the previous values that speeds and averages are computed from, so nothing is computed
    /// across the gap. What the stream said about itself (ANT channel ids, the GPS date) is kept.
    mutating func connectionLost()
}

extension SensorDecoder {
    /// Decodes `bytes`, appending the readings to `readings`.
    public mutating func decode(_ bytes: [UInt8], into readings: inout [SensorReading]) {
        bytes.withUnsafeBytes { decode($0, into: &readings) }
    }

    /// Decodes `bytes` and returns their readings.
    public mutating func decode(_ bytes: [UInt8]) -> [SensorReading] {
        var readings: [SensorReading] = []
        decode(bytes, into: &readings)
        return readings
    }
}

/// What a decoder has seen; every field only grows (wrapping, never trapping).
public struct DecoderCounters: Sendable, Hashable {
    /// Bytes passed to `decode`.
    public var bytesConsumed = 0
    /// Frames (sentences, messages, lines) with a good checksum that were decoded.
    public var framesDecoded = 0
    /// Frames whose checksum did not match: dropped.
    public var badChecksums = 0
    /// Frames with a good checksum (or none at all) that could not be decoded: bad length, missing
    /// or unparsable fields, a line cut short by the next one's start. Dropped.
    public var malformedFrames = 0
    /// Bytes skipped while looking for the start of a frame.
    public var resyncBytesSkipped = 0
    /// Well-formed frames of a type (or ANT+ page, or GATT characteristic) the decoder does not handle.
    public var unknownMessages = 0
    /// Frames longer than the decoder's bound (a line that never ends): dropped.
    public var oversizedFrames = 0
    /// Watch-link lines of a protocol version other than 1: dropped.
    public var unsupportedVersions = 0
    /// Bytes of a partial frame dropped by `connectionLost()`.
    public var bytesDroppedOnDisconnect = 0
    /// ANT messages that repeated their device's previous readings exactly (sensors resend their
    /// latest page about 4 times a second): decoded and counted, no reading added.
    public var repeatedMessages = 0

    public init() {}

    /// Frames dropped for any reason.
    public var droppedFrames: Int {
        badChecksums &+ malformedFrames &+ oversizedFrames &+ unsupportedVersions
    }
}

/// Bytes of a frame that began in an earlier chunk.
///
/// `feed` runs a scanner over the held bytes followed by the new chunk (copied once, only when bytes
/// are held) and keeps what the scanner did not consume, so frames split anywhere reassemble.
struct CarryBuffer: Sendable {
    private(set) var bytes: [UInt8] = []

    /// Runs `scan` over the held bytes + `chunk`; `scan` returns how many bytes it consumed.
    mutating func feed(_ chunk: UnsafeRawBufferPointer, _ scan: (UnsafeRawBufferPointer) -> Int) {
        if bytes.isEmpty {
            let used = min(max(scan(chunk), 0), chunk.count)
            if used < chunk.count { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[used...])) }
        } else {
            bytes.append(contentsOf: chunk)
            let used = min(max(bytes.withUnsafeBytes { scan($0) }, 0), bytes.count)
            bytes.removeFirst(used)
        }
    }

    /// Forgets the held bytes; returns how many there were.
    mutating func removeAll() -> Int {
        let count = bytes.count
        bytes.removeAll(keepingCapacity: true)
        return count
    }
}
