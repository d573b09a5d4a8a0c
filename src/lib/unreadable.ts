/** Why a file could not be read, in words (`no such file`), from the errno code of the error; else the error's own words. */
export function whyUnreadable(error: unknown): string {
  const code = typeof error === "string" ? error : (error as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case "ENOENT":
      return "no such file";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "EISDIR":
      return "it is a directory";
    case "ENOTDIR":
      return "a part of its path is not a directory";
    case "ELOOP":
      return "a symbolic link (or too many of them)";
    case "ENAMETOOLONG":
      return "its name is too long";
    case "EIO":
      return "an input/output error";
    case "ENXIO":
    case "EAGAIN":
      return "not a file that can be read now (a socket, or a pipe with no writer)";
    default:
      return code ?? (error instanceof Error ? error.message : String(error));
  }
}
