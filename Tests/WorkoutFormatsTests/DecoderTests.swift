import Foundation
import Testing
import WorkoutFormats
import WorkoutImport
import WorkoutReplay
import WorkoutStore

/// The protocol's CRC, written here from the protocol document's nibble algorithm (independently of
/// the decoder's byte table), to build test files.
func protocolCRC(_ bytes: [UInt8]) -> UInt16 {
    let table: [UInt16] = [
        0x0000, 0xCC01, 0xD801, 0x1400, 0xF001, 0x3C00, 0x2800, 0xE401,
        0xA001, 0x6C00, 0x7800, 0xB401, 0x5000, 0x9C01, 0x8801, 0x4400,
    ]
    var crc: UInt16 = 0
    for byte in bytes {
        var tmp = table[Int(crc & 0xF)]
        crc = (crc >> 4) & 0x0FFF
        crc = crc ^ tmp ^ table[Int(byte & 0xF)]
        tmp = table[Int(crc & 0xF)]
        crc = (crc >> 4) & 0x0FFF
        crc = crc ^ tmp ^ table[Int((byte >> 4) & 0xF)]
    }
    return crc
}

/// A FIT file around `records`: 14-byte header with its CRC, the records, the file CRC.
func fitFile(_ records: [UInt8], headerSize: Int = 14) -> [UInt8] {
    var file: [UInt8] = [UInt8(headerSize), 0x20, 0x52, 0x52]
    let size = UInt32(records.count)
    file += [UInt8(size & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size >> 16 & 0xFF), UInt8(size >> 24)]
    file += Array(".FIT".utf8)
    if headerSize == 14 {
        let crc = protocolCRC(file)
        file += [UInt8(crc & 0xFF), UInt8(crc >> 8)]
    }
    file += records
    let crc = protocolCRC(file)
    return file + [UInt8(crc & 0xFF), UInt8(crc >> 8)]
}

/// Little-endian bytes.
func le(_ value: UInt64, _ size: Int) -> [UInt8] {
    (0..<size).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
}

/// A record definition (local type `local`): timestamp (uint32), heart rate (uint8), distance (uint32).
func recordDefinition(local: UInt8 = 0, bigEndian: Bool = false) -> [UInt8] {
    [0x40 | local, 0, bigEndian ? 1 : 0] + (bigEndian ? [0, 20] : [20, 0]) + [3, 253, 4, 0x86, 3, 1, 0x02, 5, 4, 0x86]
}

@Suite("FIT decoder")
struct DecoderTests {
    @Test func crcMatchesTheStandardCheckValue() {
        // CRC-16/ARC (the FIT CRC) of "123456789" is 0xBB3D.
        #expect(FITCRC.checksum(Array("123456789".utf8)) == 0xBB3D)
        #expect(protocolCRC(Array("123456789".utf8)) == 0xBB3D)
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) }
        #expect(FITCRC.checksum(bytes) == protocolCRC(bytes))
    }

    @Test func decodesDefinitionsDataAndInvalidValues() throws {
        var records = recordDefinition()
        records += [0x00] + le(1_000_000_000, 4) + [142] + le(12_345, 4)
        records += [0x00] + le(1_000_000_001, 4) + [0xFF] + le(0xFFFF_FFFF, 4)  // invalid heart rate and distance
        let file = try FITDecoder.decode(fitFile(records))
        #expect(file.records.count == 2)
        #expect(file.records[0].timestamp == 1_000_000_000)
        #expect(file.records[0].heartRate == 142)
        #expect(file.records[0].distance == 123.45)
        #expect(file.records[1].heartRate == nil)
        #expect(file.records[1].distance == nil)
        #expect(file.count(20) == 2)
    }

    @Test func readsBigEndianDefinitions() throws {
        var records = recordDefinition(bigEndian: true)
        records += [0x00, 0x3B, 0x9A, 0xCA, 0x00, 150, 0x00, 0x00, 0x30, 0x39]
        let file = try FITDecoder.decode(fitFile(records))
        #expect(file.records.first?.timestamp == 1_000_000_000)
        #expect(file.records.first?.heartRate == 150)
        #expect(file.records.first?.distance == 123.45)
    }

    @Test func compressedTimestampsRollOverTheFiveBitOffset() throws {
        // Last full timestamp 1_000_000_030 (low 5 bits 30); offsets 31, then 2 (rolled over: +32 − 30 + 2).
        var records = recordDefinition()
        records += [0x00] + le(1_000_000_030, 4) + [100] + le(100, 4)
        records += [0x40 | 1, 0, 0, 20, 0, 1, 3, 1, 0x02]  // local 1: heart rate only
        records += [0x80 | (1 << 5) | 31, 101]
        records += [0x80 | (1 << 5) | 2, 102]
        let file = try FITDecoder.decode(fitFile(records))
        #expect(file.records.map(\.timestamp) == [1_000_000_030, 1_000_000_031, 1_000_000_034])
        #expect(file.records.map(\.heartRate) == [100, 101, 102])
    }

    @Test func skipsDeveloperFields() throws {
        // Definition with the developer-data flag: one standard field (heart rate), two developer fields (3 + 2 bytes).
        var records: [UInt8] = [0x60, 0, 0, 20, 0, 1, 3, 1, 0x02, 2, 0, 3, 0, 1, 2, 0]
        records += [0x00, 120, 9, 9, 9, 7, 7]
        records += [0x00, 121, 9, 9, 9, 7, 7]
        let file = try FITDecoder.decode(fitFile(records))
        #expect(file.records.map(\.heartRate) == [120, 121])
        #expect(file.developerFieldsSkipped == 4)
    }

    @Test func readsChainedFiles() throws {
        var first = recordDefinition()
        first += [0x00] + le(1_000_000_000, 4) + [130] + le(0, 4)
        var second = recordDefinition(local: 3)
        second += [0x03] + le(1_000_000_100, 4) + [131] + le(0, 4)
        let file = try FITDecoder.decode(fitFile(first) + fitFile(second, headerSize: 12))
        #expect(file.headers.map(\.offset) == [0, fitFile(first).count])
        #expect(file.headers.map(\.headerSize) == [14, 12])
        #expect(file.records.map(\.heartRate) == [130, 131])
        #expect(file.trailingBytes == 0)
    }

    @Test func aChainedFileDoesNotInheritDefinitions() throws {
        var first = recordDefinition()
        first += [0x00] + le(1_000_000_000, 4) + [130] + le(0, 4)
        let second = [0x00] + le(1_000_000_100, 4) + [131] + le(0, 4)
        let bytes = fitFile(first) + fitFile(second)
        #expect(throws: FITError.undefinedLocalMessage(offset: fitFile(first).count + 14, localType: 0)) {
            try FITDecoder.decode(bytes)
        }
    }

    // MARK: bad input

    @Test func anEmptyFileIsRefused() {
        #expect(throws: FITError.empty) { try FITDecoder.decode([]) }
        #expect(FITError.empty.description.contains("0 bytes"))
    }

    @Test func aTruncatedFileNamesWhereItEnds() throws {
        let bytes = try SharedData.bytes("al2_920xt-run")
        for cut in [5, 13, 200, bytes.count / 2, bytes.count - 1] {
            let truncated = Array(bytes.prefix(cut))
            #expect(throws: FITError.self) { try FITDecoder.decode(truncated) }
            do {
                _ = try FITDecoder.decode(truncated)
            } catch {
                guard case .truncated(let offset, _, _, let available) = error else {
                    Issue.record("cut at \(cut): \(error)")
                    continue
                }
                #expect(offset == cut)
                #expect(available <= cut)
                #expect(error.description.contains("byte \(cut)"))
            }
        }
    }

    @Test func aDamagedHeaderFailsItsCRC() throws {
        var bytes = try SharedData.bytes("al2_920xt-run")
        bytes[2] ^= 0x01  // profile version
        #expect(throws: FITError.self) { try FITDecoder.decode(bytes) }
        do {
            _ = try FITDecoder.decode(bytes)
        } catch {
            guard case .headerCRC(let offset, let stored, let computed) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(offset == 12)
            #expect(stored != computed)
            #expect(error.description.hasPrefix("byte 12:"))
        }
    }

    @Test func damagedDataFailsTheFileCRC() throws {
        var bytes = try SharedData.bytes("al2_920xt-run")
        bytes[bytes.count / 2] ^= 0x40
        do {
            _ = try FITDecoder.decode(bytes)
            Issue.record("a damaged file decoded")
        } catch {
            guard case .dataCRC(let offset, _, _) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(offset == bytes.count - 2)
            #expect(error.description.contains("byte \(bytes.count - 2)"))
        }
    }

    @Test func aDataMessageOfAnUndefinedLocalTypeIsRefused() {
        var records = recordDefinition(local: 0)
        records += [0x00] + le(1_000_000_000, 4) + [130] + le(0, 4)
        let offset = 14 + records.count
        records += [0x05] + le(1_000_000_001, 4) + [131] + le(0, 4)
        #expect(throws: FITError.undefinedLocalMessage(offset: offset, localType: 5)) {
            try FITDecoder.decode(fitFile(records))
        }
        #expect(
            FITError.undefinedLocalMessage(offset: offset, localType: 5).description.contains(
                "byte \(offset): a data message uses local message type 5"))
    }

    @Test func aCompressedTimestampWithoutAFullOneIsRefused() {
        var records: [UInt8] = [0x40, 0, 0, 20, 0, 1, 3, 1, 0x02]
        records += [0x80 | 4, 120]
        #expect(throws: FITError.compressedTimestampWithoutReference(offset: 14 + 9)) {
            try FITDecoder.decode(fitFile(records))
        }
    }

    @Test func aRecordRunningPastTheDataIsRefused() {
        var records = recordDefinition()
        records += [0x00, 1, 2]  // the header and 2 of the 9 data bytes a record of this definition needs
        #expect(throws: FITError.recordOverrun(offset: 14 + 15, needed: 10, dataEnd: 14 + 18)) {
            try FITDecoder.decode(fitFile(records))
        }
    }

    @Test func aBadArchitectureByteIsRefused() {
        var records = recordDefinition()
        records[2] = 7
        #expect(throws: FITError.self) { try FITDecoder.decode(fitFile(records)) }
        do {
            _ = try FITDecoder.decode(fitFile(records))
        } catch {
            guard case .invalidDefinition(let offset, let detail) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(offset == 16)
            #expect(detail.contains("architecture"))
        }
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8])
    func randomBytesAreNotAFITFile(seed: UInt64) {
        var state = seed &* 0x9E37_79B9_7F4A_7C15
        let bytes = (0..<(1 + Int(seed) * 997)).map { _ -> UInt8 in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
        do {
            _ = try FITDecoder.decode(bytes)
            Issue.record("random bytes decoded")
        } catch {
            switch error {
            case .notFIT(let offset, _): #expect(offset == 0 || offset == 8)
            case .truncated(let offset, _, _, _): #expect(offset == bytes.count)
            default: Issue.record("unexpected \(error)")
            }
            #expect(error.description.hasPrefix("byte "))
        }
    }

    /// Without salvage a file that fails to decode is not imported: nothing in the store, no journal left behind.
    @Test func aBadFileImportsNothing() throws {
        let store = try temporaryStore()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bad-fit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var damaged = try SharedData.bytes("al2_920xt-run")
        damaged[1000] ^= 0x10
        let files: [(String, [UInt8])] = [
            ("empty.fit", []), ("truncated.fit", Array(try SharedData.bytes("al2_920xt-run").prefix(5000))),
            ("damaged.fit", damaged), ("random.fit", Array(repeating: 0x5A, count: 300)),
        ]
        for (name, bytes) in files {
            let path = folder.appendingPathComponent(name).path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            // Salvage on, only files with nothing usable are refused (DeviceConventionTests covers the rest).
            if name == "empty.fit" || name == "random.fit" {
                #expect(throws: FileImportError.self) { try FileImport.run(path: path, into: store) }
            }
            do {
                _ = try FileImport.runFIT(path: path, into: store, options: ImportOptions(salvage: false))
                Issue.record("\(name) imported")
            } catch {
                guard case .format(_, let reason) = error, case .decoding(let fitError)? = reason as? ImportError else {
                    Issue.record("\(name): \(error)")
                    continue
                }
                #expect(error.description.contains("byte \(fitError.offset)"), "\(error)")
            }
        }
        #expect(try store.workouts(matching: WorkoutQuery()).isEmpty)
        #expect(try store.journaledSessions().isEmpty)
    }
}
