module memprobe

go 1.26
