/// Why a FIT file could not be decoded; every case names the byte offset where it went wrong and
/// says what to do.
public enum FITError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file has no bytes at all.
    case empty
    /// The bytes at `offset` are not a FIT file header (size byte, `.FIT` signature).
    case notFIT(offset: Int, detail: String)
    /// The file ends before what its header or a record announced: `needed` bytes at `offset`,
    /// `available` left.
    case truncated(offset: Int, what: String, needed: Int, available: Int)
    /// The 14-byte header's CRC (bytes 12–13) does not match bytes 0–11.
    case headerCRC(offset: Int, stored: UInt16, computed: UInt16)
    /// The file CRC after the data section does not match the header and data.
    case dataCRC(offset: Int, stored: UInt16, computed: UInt16)
    /// A data message refers to a local message type no definition message has defined.
    case undefinedLocalMessage(offset: Int, localType: UInt8)
    /// A definition message that cannot be right (architecture, sizes).
    case invalidDefinition(offset: Int, detail: String)
    /// A record runs past the end of the data section the header announced.
    case recordOverrun(offset: Int, needed: Int, dataEnd: Int)
    /// A compressed-timestamp record came before any full timestamp it could be relative to.
    case compressedTimestampWithoutReference(offset: Int)

    /// The byte offset in the file where the problem is.
    public var offset: Int {
        switch self {
        case .empty: 0
        case .notFIT(let offset, _), .truncated(let offset, _, _, _), .headerCRC(let offset, _, _),
            .dataCRC(let offset, _, _), .undefinedLocalMessage(let offset, _), .invalidDefinition(let offset, _),
            .recordOverrun(let offset, _, _), .compressedTimestampWithoutReference(let offset):
            offset
        }
    }

    public var description: String {
        switch self {
        case .empty:
            return "byte 0: the file is empty (0 bytes), not a FIT file; export the activity from the device again"
        case .notFIT(let offset, let detail):
            return "byte \(offset): not a FIT file header (\(detail)); is this really a .fit file?"
        case .truncated(let offset, let what, let needed, let available):
            return "byte \(offset): the file ends inside \(what) (needs \(needed) bytes, \(available) left); "
                + "the file was cut short, copy it from the device again"
        case .headerCRC(let offset, let stored, let computed):
            return "byte \(offset): header CRC is \(hex(stored)) but bytes 0–11 give \(hex(computed)); "
                + "the header is damaged, copy the file from the device again"
        case .dataCRC(let offset, let stored, let computed):
            return "byte \(offset): file CRC is \(hex(stored)) but the header and data give \(hex(computed)); "
                + "the file is damaged, copy it from the device again"
        case .undefinedLocalMessage(let offset, let localType):
            return "byte \(offset): a data message uses local message type \(localType), which no definition "
                + "message defined before it; the file is corrupt"
        case .invalidDefinition(let offset, let detail):
            return "byte \(offset): invalid definition message (\(detail)); the file is corrupt"
        case .recordOverrun(let offset, let needed, let dataEnd):
            return "byte \(offset): a record of \(needed) bytes runs past the end of the data at byte \(dataEnd); "
                + "the file is corrupt"
        case .compressedTimestampWithoutReference(let offset):
            return "byte \(offset): a compressed-timestamp record comes before any full timestamp; the file is corrupt"
        }
    }
}

private func hex(_ value: UInt16) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return "0x" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
