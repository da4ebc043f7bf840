import re,os,sys,collections
root=sys.argv[1] if len(sys.argv)>1 else 'src'
def room(path):
    rel=os.path.relpath(path,root).replace('\\','/')
    parts=rel.split('/')
    if parts[0]=='kits' and len(parts)>1:
        return 'kits/'+parts[1].replace('.rs','') if parts[1]!='mod.rs' else 'kits'
    return parts[0].replace('.rs','')
edges=collections.defaultdict(set); why=collections.defaultdict(list)
for d,_,fs in os.walk(root):
    for f in fs:
        if not f.endswith('.rs'): continue
        p=os.path.join(d,f); r=room(p)
        text=open(p).read()
        # strip test modules crudely: ignore after '#[cfg(test)]\nmod tests'
        i=text.find('#[cfg(test)]\nmod tests')
        if i>=0: text=text[:i]
        for m in re.finditer(r'crate::([a-z_]+)(?:::([a-z_]+))?',text):
            a,b=m.group(1),m.group(2)
            t='kits/'+b if a=='kits' and b else a
            if t!=r and t not in ('self',):
                edges[r].add(t); why[(r,t)].append(os.path.relpath(p,root))
for r in sorted(edges): print(r,'->',sorted(edges[r]))
# cycles: SCCs
idx={};low={};st=[];on=set();sccs=[];c=[0]
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in edges.get(v,()):
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        s=[]
        while True:
            w=st.pop();on.discard(w);s.append(w)
            if w==v:break
        if len(s)>1:sccs.append(s)
for v in list(edges):
    if v not in idx: sc(v)
print('cycles:',sccs)
for s in sccs:
    for a in s:
        for b in edges[a]:
            if b in s: print(' ',a,'->',b,sorted(set(why[(a,b)])))
