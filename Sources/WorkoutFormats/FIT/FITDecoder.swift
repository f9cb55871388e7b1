/// How strictly the decoder checks a file.
public struct FITDecodeOptions: Sendable, Hashable {
    /// Check the header CRC and the file CRC (on by default). Off, a damaged file decodes as far as
    /// its structure allows (fuzzing, forensics).
    public var verifyChecksums: Bool
    /// Keep what precedes damage (off by default). On, a file cut short, a bad checksum or a corrupt
    /// message no longer throws once a valid header was read: every complete message before the
    /// damage is kept and `FITFile.damage` names the first problem and its byte offset. A file
    /// whose first header is unreadable still throws.
    public var salvage: Bool

    public init(verifyChecksums: Bool = true, salvage: Bool = false) {
        self.verifyChecksums = verifyChecksums
        self.salvage = salvage
    }
}

/// Decodes FIT files (the public FIT protocol): file headers and CRCs, definition and data messages,
/// compressed-timestamp headers, developer fields (skipped), chained files.
///
/// Messages the engine needs are decoded into typed values (`FITFile`); every other message is
/// counted and stepped over. Invalid values (the base type's invalid pattern) are absent (nil).
/// Component fields the importer relies on are expanded: `cycles` into `total_cycles`,
/// `compressed_speed_distance` into speed and distance, `hr.event_timestamp_12` into event times.
/// Every read is bounds-checked: a malformed file throws a `FITError` naming the byte offset.
public enum FITDecoder {
    /// Decodes a whole file.
    public static func decode(
        _ bytes: [UInt8], options: FITDecodeOptions = FITDecodeOptions()
    ) throws(FITError)
        -> FITFile
    {
        guard !bytes.isEmpty else { throw .empty }
        var result: Result<FITFile, FITError> = .failure(.empty)
        bytes.withUnsafeBytes { buffer in
            var parser = FITParser(buffer: buffer, options: options)
            do throws(FITError) {
                try parser.parseFile()
                result = .success(parser.file)
            } catch {
                result = .failure(error)
            }
        }
        return try result.get()
    }
}

/// One field of a definition message, placed in its data message.
struct FITFieldSlot: Sendable {
    var number: UInt8
    var offset: Int
    var size: Int
    /// Normalised base type index (0…16).
    var type: UInt8
    /// Bytes of one element of the base type.
    var elementSize: Int
    var kind: FITBaseType.Kind

    init(number: UInt8, offset: Int, size: Int, type: UInt8) {
        self.number = number
        self.offset = offset
        self.size = size
        self.type = type
        elementSize = FITBaseType.sizes[Int(type)]
        kind = FITBaseType.kinds[Int(type)]
    }
}

/// What a local message type means, set by its definition message.
struct FITLocalDefinition: Sendable {
    enum Kind: UInt8 { case other, fileID, fileCreator, sport, session, lap, record, event, activity, length, hr }

    var global: UInt16
    var bigEndian: Bool
    var kind: Kind
    /// Bytes of one data message (standard and developer fields).
    var size: Int
    var fields: [FITFieldSlot]
    /// Field number → index in `fields` (−1 when absent).
    var lookup: [Int16]
    /// Index of the counter in the parser's message counts.
    var counter: Int
    /// Developer fields in each data message (their bytes are skipped).
    var developerFields: Int

    static func kind(of global: UInt16) -> Kind {
        switch global {
        case FITProfile.Message.fileID: .fileID
        case FITProfile.Message.fileCreator: .fileCreator
        case FITProfile.Message.sport: .sport
        case FITProfile.Message.session: .session
        case FITProfile.Message.lap: .lap
        case FITProfile.Message.record: .record
        case FITProfile.Message.event: .event
        case FITProfile.Message.activity: .activity
        case FITProfile.Message.length: .length
        case FITProfile.Message.hr: .hr
        default: .other
        }
    }
}

/// The decoder's state while it walks the bytes.
struct FITParser {
    let buffer: UnsafeRawBufferPointer
    let options: FITDecodeOptions
    var file = FITFile()

    // Per chained file.
    var locals = [FITLocalDefinition?](repeating: nil, count: 16)
    var lastTimestamp: UInt32?
    var totalCycles: UInt32?
    var compressedDistance: UInt32?
    /// hr messages: the accumulated event timestamp (1/1024 s) and the offset from event time to FIT time.
    var heartEventTime: UInt32?
    var heartAnchor: Double?

    // Message counts by global number, in a dense array while parsing.
    var counterIndex: [UInt16: Int] = [:]
    var counters: [Int] = []
    var counterGlobals: [UInt16] = []

    init(buffer: UnsafeRawBufferPointer, options: FITDecodeOptions) {
        self.buffer = buffer
        self.options = options
    }

    // MARK: bytes

    @inline(__always)
    func u8(_ at: Int) -> UInt8 { buffer[at] }

    @inline(__always)
    func u16le(_ at: Int) -> UInt16 { UInt16(buffer[at]) | UInt16(buffer[at + 1]) << 8 }

    @inline(__always)
    func u32le(_ at: Int) -> UInt32 {
        UInt32(buffer[at]) | UInt32(buffer[at + 1]) << 8 | UInt32(buffer[at + 2]) << 16 | UInt32(buffer[at + 3]) << 24
    }

    /// An unsigned integer of `size` (1…8) bytes at `at`.
    @inline(__always)
    func unsigned(_ at: Int, _ size: Int, bigEndian: Bool) -> UInt64 {
        switch size {
        case 1:
            return UInt64(buffer[at])
        case 2:
            let value = buffer.loadUnaligned(fromByteOffset: at, as: UInt16.self)
            return UInt64(bigEndian ? UInt16(bigEndian: value) : UInt16(littleEndian: value))
        case 4:
            let value = buffer.loadUnaligned(fromByteOffset: at, as: UInt32.self)
            return UInt64(bigEndian ? UInt32(bigEndian: value) : UInt32(littleEndian: value))
        case 8:
            let value = buffer.loadUnaligned(fromByteOffset: at, as: UInt64.self)
            return bigEndian ? UInt64(bigEndian: value) : UInt64(littleEndian: value)
        default:
            break
        }
        var value: UInt64 = 0
        if bigEndian {
            for index in 0..<size { value = value << 8 | UInt64(buffer[at + index]) }
        } else {
            var index = size - 1
            while index >= 0 {
                value = value << 8 | UInt64(buffer[at + index])
                index -= 1
            }
        }
        return value
    }

    // MARK: file structure

    mutating func parseFile() throws(FITError) {
        var offset = 0
        repeat {
            do {
                offset = try parsePart(at: offset)
            } catch {
                // Salvage: keep every complete message before the damage (a header was read).
                guard options.salvage, !file.headers.isEmpty else { throw error }
                if file.damage == nil { file.damage = error }
                offset = buffer.count
            }
        } while offset < buffer.count && startsHeader(at: offset)
        file.trailingBytes = buffer.count - offset
        var counts: [UInt16: Int] = [:]
        for (index, global) in counterGlobals.enumerated() { counts[global] = counters[index] }
        file.messageCounts = counts
    }

    /// Whether a chained FIT file starts at `offset` (header size byte and `.FIT` signature).
    func startsHeader(at offset: Int) -> Bool {
        guard buffer.count - offset >= 12, buffer[offset] >= 12 else { return false }
        return buffer[offset + 8] == 0x2E && buffer[offset + 9] == 0x46 && buffer[offset + 10] == 0x49
            && buffer[offset + 11] == 0x54
    }

    /// Parses one FIT file (header, records, CRC) at `offset`; returns the offset after its CRC.
    mutating func parsePart(at offset: Int) throws(FITError) -> Int {
        let available = buffer.count - offset
        let headerSize = Int(buffer[offset])
        guard headerSize >= 12 else {
            throw .notFIT(offset: offset, detail: "header size byte is \(headerSize), expected 12 or 14")
        }
        guard available >= headerSize else {
            throw .truncated(
                offset: buffer.count, what: "the \(headerSize)-byte file header", needed: headerSize,
                available: available)
        }
        guard buffer[offset + 8] == 0x2E, buffer[offset + 9] == 0x46, buffer[offset + 10] == 0x49,
            buffer[offset + 11] == 0x54
        else {
            throw .notFIT(offset: offset + 8, detail: "no \".FIT\" signature at bytes \(offset + 8)–\(offset + 11)")
        }
        var header = FITFileHeader(
            offset: offset, headerSize: headerSize, protocolVersion: buffer[offset + 1],
            profileVersion: u16le(offset + 2), dataSize: Int(u32le(offset + 4)), headerCRC: nil)
        if headerSize >= 14 {
            let stored = u16le(offset + 12)
            header.headerCRC = stored
            if options.verifyChecksums, stored != 0 {
                let computed = FITCRC.update(0, UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + 12)]))
                if computed != stored {
                    let error = FITError.headerCRC(offset: offset + 12, stored: stored, computed: computed)
                    guard options.salvage else { throw error }
                    if file.damage == nil { file.damage = error }
                }
            }
        }
        let dataStart = offset + headerSize
        var dataEnd = dataStart + header.dataSize
        var cutShort: FITError?
        if header.dataSize > buffer.count - dataStart - 2 {
            let error = FITError.truncated(
                offset: buffer.count,
                what: "the \(header.dataSize)-byte data section and 2-byte CRC the header at byte \(offset) announces",
                needed: header.dataSize + 2, available: buffer.count - dataStart)
            guard options.salvage else { throw error }
            // Decode what is there; the damage is the first message that does not fit, or the cut.
            cutShort = error
            dataEnd = buffer.count
        } else if options.verifyChecksums {
            let stored = u16le(dataEnd)
            let computed = FITCRC.update(0, UnsafeRawBufferPointer(rebasing: buffer[offset..<dataEnd]))
            if computed != stored {
                let error = FITError.dataCRC(offset: dataEnd, stored: stored, computed: computed)
                guard options.salvage else { throw error }
                if file.damage == nil { file.damage = error }
            }
        }
        file.headers.append(header)
        // Records are most of a file and at least 8 bytes each: reserve instead of growing 20 times.
        // (What is there, not what a damaged header announces.)
        file.records.reserveCapacity(file.records.count + (dataEnd - dataStart) / 24)
        // A chained file starts afresh: its local definitions and accumulated values are its own.
        locals = [FITLocalDefinition?](repeating: nil, count: 16)
        lastTimestamp = nil
        totalCycles = nil
        compressedDistance = nil
        heartEventTime = nil
        heartAnchor = nil
        try parseRecords(from: dataStart, to: dataEnd)
        if let cutShort { throw cutShort }
        return dataEnd + 2
    }

    mutating func parseRecords(from start: Int, to end: Int) throws(FITError) {
        var position = start
        while position < end {
            let header = buffer[position]
            if header & 0x80 != 0 {
                // Compressed timestamp header: local type in bits 5–6, time offset in bits 0–4.
                let local = Int((header >> 5) & 0x03)
                guard let definition = locals[local] else {
                    throw .undefinedLocalMessage(offset: position, localType: UInt8(local))
                }
                guard let last = lastTimestamp else { throw .compressedTimestampWithoutReference(offset: position) }
                let offset5 = UInt32(header & 0x1F)
                var timestamp = (last & ~0x1F) | offset5
                if offset5 < last & 0x1F { timestamp = timestamp &+ 0x20 }
                lastTimestamp = timestamp
                guard definition.size <= end - position - 1 else {
                    throw .recordOverrun(offset: position, needed: definition.size + 1, dataEnd: end)
                }
                decodeData(definition, at: position + 1, timestamp: timestamp)
                position += 1 + definition.size
            } else if header & 0x40 != 0 {
                position = try parseDefinition(at: position, end: end)
            } else {
                let local = Int(header & 0x0F)
                guard let definition = locals[local] else {
                    throw .undefinedLocalMessage(offset: position, localType: UInt8(local))
                }
                guard definition.size <= end - position - 1 else {
                    throw .recordOverrun(offset: position, needed: definition.size + 1, dataEnd: end)
                }
                decodeData(definition, at: position + 1, timestamp: nil)
                position += 1 + definition.size
            }
        }
    }

    /// Parses a definition message at `position`; returns the offset after it.
    mutating func parseDefinition(at position: Int, end: Int) throws(FITError) -> Int {
        let header = buffer[position]
        let local = Int(header & 0x0F)
        let hasDeveloperFields = header & 0x20 != 0
        guard end - position >= 6 else { throw .recordOverrun(offset: position, needed: 6, dataEnd: end) }
        let architecture = buffer[position + 2]
        guard architecture <= 1 else {
            throw .invalidDefinition(
                offset: position + 2,
                detail: "architecture byte is \(architecture), expected 0 (little-endian) or 1 (big-endian)")
        }
        let bigEndian = architecture == 1
        let global =
            bigEndian
            ? UInt16(buffer[position + 3]) << 8 | UInt16(buffer[position + 4]) : u16le(position + 3)
        let fieldCount = Int(buffer[position + 5])
        var cursor = position + 6
        guard end - cursor >= 3 * fieldCount else {
            throw .recordOverrun(offset: position, needed: 6 + 3 * fieldCount, dataEnd: end)
        }
        var fields: [FITFieldSlot] = []
        fields.reserveCapacity(fieldCount)
        var lookup = [Int16](repeating: -1, count: 256)
        var size = 0
        for _ in 0..<fieldCount {
            let number = buffer[cursor]
            let fieldSize = Int(buffer[cursor + 1])
            let type = FITBaseType.index(buffer[cursor + 2])
            if fieldSize > 0 {
                lookup[Int(number)] = Int16(fields.count)
                fields.append(FITFieldSlot(number: number, offset: size, size: fieldSize, type: type))
            }
            size += fieldSize
            cursor += 3
        }
        var developerFields = 0
        if hasDeveloperFields {
            guard end - cursor >= 1 else {
                throw .recordOverrun(offset: position, needed: cursor + 1 - position, dataEnd: end)
            }
            let developerCount = Int(buffer[cursor])
            developerFields = developerCount
            cursor += 1
            guard end - cursor >= 3 * developerCount else {
                throw .recordOverrun(offset: position, needed: cursor + 3 * developerCount - position, dataEnd: end)
            }
            for _ in 0..<developerCount {
                size += Int(buffer[cursor + 1])
                cursor += 3
            }
        }
        let counter: Int
        if let existing = counterIndex[global] {
            counter = existing
        } else {
            counter = counters.count
            counterIndex[global] = counter
            counters.append(0)
            counterGlobals.append(global)
        }
        locals[local] = FITLocalDefinition(
            global: global, bigEndian: bigEndian, kind: FITLocalDefinition.kind(of: global), size: size, fields: fields,
            lookup: lookup, counter: counter, developerFields: developerFields)
        return cursor
    }
}
